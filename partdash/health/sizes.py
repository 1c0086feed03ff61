"""Size figures derived from the collected ones."""


def estimated_data_free(
    file_bytes: int | None, data_bytes: int | None, index_bytes: int | None
) -> int | None:
    """Free space inside a partition's tablespace: the file minus the pages the statistics
    count for its indexes. An estimate: the statistics may be older than the file size."""
    if file_bytes is None or data_bytes is None or index_bytes is None:
        return None
    return max(0, file_bytes - data_bytes - index_bytes)


def row_share(rows: int | None, table_rows: int | None) -> float | None:
    """This partition's fraction of the table's (estimated) rows."""
    if rows is None or not table_rows:
        return None
    return rows / table_rows
