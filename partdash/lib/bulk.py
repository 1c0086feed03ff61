"""Writing many rows' new values at once."""

from django.db import connection


def update_each(model, objects: list, field_names) -> None:
    """One `UPDATE ... WHERE id = %s` per object, run with executemany, each value through
    its field's own conversion to the database. Django's bulk_update builds a CASE per
    column instead, which costs more than the work around it for hundreds of rows (the
    per-poll analysis, an alert storm)."""
    if not objects:
        return
    quote = connection.ops.quote_name
    fields = [model._meta.get_field(name) for name in field_names]
    assignments = ", ".join(f"{quote(f.column)} = %s" for f in fields)
    sql = f"UPDATE {quote(model._meta.db_table)} SET {assignments} WHERE id = %s"
    rows = [
        [f.get_db_prep_save(getattr(obj, f.attname), connection) for f in fields] + [obj.pk]
        for obj in objects
    ]
    with connection.cursor() as cursor:
        cursor.executemany(sql, rows)
