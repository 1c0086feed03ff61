# partdash: `make up` runs the product, `make test` runs every test, `make bench` the benchmarks.
.PHONY: up test bench lint format

up:
	@scripts/up.sh

test:
	@scripts/test.sh

bench:
	@scripts/bench.sh

lint:
	.venv/bin/ruff check . && .venv/bin/ruff format --check .
	cd frontend && npm run --silent lint

format:
	.venv/bin/ruff format . && .venv/bin/ruff check --fix .
	cd frontend && npm run --silent format
