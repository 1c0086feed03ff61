"""How partdash's connections to its store are set up, once per connection.

PostgreSQL compiles a query with its JIT once the planner's estimate passes
`jit_above_cost` (100,000): partdash's queries are short, and an estimate that high is
one of a correlated subquery over a thousand servers' alerts, which then spent 68 ms of
its 254 compiling (docs/benchmarks.md, stop 56). A `SET` rather than a startup option
(`options=-c jit=off`): connection poolers such as PgBouncer refuse startup options.
"""

from typing import Any

from django.db.backends.signals import connection_created


def without_jit(sender: Any, connection: Any, **kwargs: Any) -> None:
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SET jit = off")


def connect() -> None:
    connection_created.connect(without_jit, dispatch_uid="partdash-without-jit")
