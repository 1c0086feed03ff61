"""Pure partition-health analytics: plain values in, plain values out, no database.

One concern per module, each figure computed in exactly one place for the API, the
pages and the alerts:
- `partitions`: `PartitionState`, the input every function reads.
- `skew`: max/mean, CV and Gini of rows or bytes, judged by partitioning method.
- `hotspots`: shares of a window's I/O (or changes, or growth) and hot partitions.
- `compression`: ROW_FORMAT=COMPRESSED and page compression ratios and failure rates.
- `bounds` and `runway`: RANGE bounds as dates or ids; days left before MAXVALUE.
- `pressure`: partitions against server limits, the written working set against the
  buffer pool, fragmentation and stale statistics.
- `counters`, `estimates`, `sizes`: counter deltas across resets, labelling of
  estimates, derived sizes.
"""
