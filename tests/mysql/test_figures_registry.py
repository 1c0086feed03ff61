"""The registry of per-partition figures (`partdash.mysql.figures`): each declaration has
its field in the collector, its columns in the store, its place in its source's query and
rows, and its name in the API; and the registry refuses what would half-hold."""

from dataclasses import fields

import pytest

from partdash.api.serializers import PartitionSerializer
from partdash.collector.collect import PartitionFigures
from partdash.metrics import store
from partdash.metrics.models import SAMPLED_FIGURES, Partition, PartitionSample
from partdash.mysql import catalogue, figures
from partdash.mysql.figures import PartitionFigure, register
from partdash.mysql.sources.compression import PartitionCompression
from partdash.mysql.sources.file_io import PartitionIO
from partdash.polling import pollmemory

DECLARED = {figure.name for figure in figures.registered()}


def test_every_figure_is_a_field_of_the_collectors_partition_figures_and_no_other():
    collected = {f.name for f in fields(PartitionFigures)} - {"name", "key", "slot"}
    assert collected == DECLARED


def test_stored_figures_are_partition_columns_and_sampled_ones_sample_columns():
    partition_columns = {f.name for f in Partition._meta.get_fields()}
    sample_columns = {f.name for f in PartitionSample._meta.get_fields()}
    for figure in figures.registered():
        assert (figure.name in partition_columns) == figure.stored, figure.name
        assert (figure.name in sample_columns) == figure.sampled, figure.name
    assert sample_columns - {"id", "partition", "snapshot"} == set(SAMPLED_FIGURES)
    assert store.FIGURES == SAMPLED_FIGURES + figures.stored_unsampled()


def test_the_sources_queries_select_their_figures_in_the_order_of_their_rows():
    assert PartitionIO._fields[1:] == figures.of_source(figures.FILE_IO)
    assert PartitionCompression._fields[1:] == figures.of_source(figures.CMP_PER_INDEX)
    for source in (catalogue.FILE_IO, catalogue.CMP_PER_INDEX, catalogue.TABLESTATS):
        assert f"{figures.columns(source.key)} FROM " in source.sql


def test_the_partitions_api_shows_every_figure_declared_for_it():
    assert set(figures.in_api()) <= set(PartitionSerializer.Meta.fields)
    assert "read_wait_us" in PartitionSerializer.Meta.fields
    assert "compress_ops" not in PartitionSerializer.Meta.fields  # (api=False)


def test_the_poll_memory_format_carries_the_registrys_layout():
    assert pollmemory.FORMAT.endswith(figures.layout())


@pytest.mark.parametrize(
    ("declared", "refusal"),
    [
        (PartitionFigure("rows", figures.INNODB_TABLE_STATS, "rows"), "already registered"),
        (PartitionFigure("x_bytes", figures.FILE_IO, "bytes", sampled=True), "in a group"),
        (PartitionFigure("y_bytes", figures.FILE_IO, "bytes", group="size"), "in a group"),
        (PartitionFigure("z_us", figures.FILE_IO, "us", follows="nothing"), "undeclared"),
    ],
)
def test_the_registry_refuses_what_would_half_hold(declared, refusal):
    with pytest.raises(ValueError, match=refusal):
        register(declared)
    assert {figure.name for figure in figures.registered()} == DECLARED
