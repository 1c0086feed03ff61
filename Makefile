# partdash: `make up` runs the product, `make test` runs every test, `make bench` the benchmarks.
.PHONY: up test bench lint format docs

up:
	@scripts/up.sh

test:
	@scripts/test.sh

bench:
	@scripts/bench.sh

# lint-imports: the layers of partdash/ and no cycle inside a package (pyproject.toml,
# docs/development.md "Layout").
lint:
	.venv/bin/ruff check . && .venv/bin/ruff format --check .
	.venv/bin/mypy
	.venv/bin/lint-imports --no-cache --no-logo
	cd frontend && npm run --silent lint

format:
	.venv/bin/ruff format . && .venv/bin/ruff check --fix .
	cd frontend && npm run --silent format

# The manual (docs/, mkdocs.yml) into var/site/; make test builds it the same way.
docs:
	NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict
