"""MySQL's filename encoding and the partition names InnoDB's sources spell, without a
server (tests/mysql/test_unicode_names.py holds the same decoder against a real one)."""

import pytest

from partdash.mysql.filename_charset import DECODE, ENCODE, ROWS, UNUSED
from partdash.mysql.names import (
    PartitionKey,
    PartitionName,
    decode_filename,
    encode_filename,
    file_path_key,
    fold,
    path_key,
    split_partition,
    split_tablespace,
)

# Every character an identifier may hold: the Basic Multilingual Plane but NUL and the
# surrogates (which UTF-8 cannot carry).
IDENTIFIER_CHARACTERS = [chr(code) for code in range(1, 0x10000) if not 0xD800 <= code <= 0xDFFF]


# -- the encoding --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("encoded", "name"),
    [
        ("caf@0p@002d@0pv@0pnements", "café-événements"),  # the table
        ("orders", "orders"),
        ("Weird@0024Name", "Weird$Name"),
        ("@6l@6m@6n@6o", "αβγδ"),
        ("@0R@0S@0T@0t", "ËÌÍí"),
        ("@G0@g0", "Аа"),
        ("@4e2d@6587", "中文"),
        ("a@0020b@002ec@0023d@0040e", "a b.c#d@e"),
        ("@0027@0022@0060", "'\"`"),
        ("@002f@005c", "/\\"),
    ],
)
def test_decoding_reads_both_forms_of_escape(encoded, name):
    assert decode_filename(encoded) == name
    assert encode_filename(name) == encoded


def test_every_identifier_character_survives_encoding_and_decoding():
    for char in IDENTIFIER_CHARACTERS:
        encoded = encode_filename(char)
        assert decode_filename(encoded) == char, (hex(ord(char)), encoded)


def test_only_ascii_letters_digits_and_underscore_are_written_as_they_are():
    kept = {char for char in map(chr, range(1, 128)) if encode_filename(char) == char}
    assert kept == set("0123456789_ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")


def test_the_grid_has_80_columns_per_row_and_1511_characters():
    assert all(len(row) == 80 for row in ROWS)
    assert len(DECODE) == 1511 == len({char for row in ROWS for char in row} - {UNUSED})


def test_no_two_character_code_is_made_of_hex_digits():
    """So `@` followed by four hex digits can be read before the table, as the server
    reads the table first."""
    hex_digits = set("0123456789abcdef")
    assert not [code for code in DECODE if set(code) <= hex_digits]


def test_one_character_is_read_from_its_code_but_written_in_hex():
    assert decode_filename("@zy") == "ῴ"
    assert encode_filename("ῴ") == "@1ff4"
    assert len(ENCODE) == len(DECODE) - 1


def test_a_name_the_server_could_not_decode_is_a_mysql_5_0_name():
    assert decode_filename("a-b") == "#mysql50#a-b"
    assert decode_filename("a@zzb") == "#mysql50#a@zzb"  # an unused code
    assert decode_filename("a@00") == "#mysql50#a@00"


def test_the_servers_temporary_files_keep_their_names():
    assert decode_filename("#sql-alter-1f-2a") == "#sql-alter-1f-2a"
    assert decode_filename("@0023sql") == "#sql"  # a user's table named #sql


# -- tablespace and file names: encoded, so every `#` is a separator -----------------------


@pytest.mark.parametrize(
    ("tablespace", "name"),
    [
        ("shop/orders#P#p3", ("shop", "orders", "p3", "")),
        ("shop/orders#p#p3#sp#p3sp0", ("shop", "orders", "p3", "p3sp0")),
        (
            "caf@0p@002d@0pv@0pnements/@1On@0vcode@0020t@0lble@0023P@0023x#P#p0",
            ("café-événements", "Ünïcode tåble#P#x", "p0", ""),
        ),
        ("s/a@00400024b#P#p@0023P@0023q", ("s", "a@0024b", "p#P#q", "")),
        ("s/x@0023p@0023y#P#P@0p#SP#@6l", ("s", "x#p#y", "Pé", "α")),
    ],
)
def test_tablespace_names_are_split_before_they_are_decoded(tablespace, name):
    assert split_tablespace(tablespace) == PartitionName(*name)


@pytest.mark.parametrize(
    "tablespace",
    [
        "shop/orders",  # not partitioned
        "innodb_system",
        "shop/orders#P#p3#TMP#",  # being reorganised
        "shop/orders#P#p3#REN#",
        "shop/#sql-alter-1f-2a#P#p0",  # a table being altered
        "shop/orders#P#",
    ],
)
def test_other_tablespaces_are_not_partitions(tablespace):
    assert split_tablespace(tablespace) is None


def test_a_file_path_key_equals_the_key_of_its_partition():
    name = PartitionName("café-événements", "a@0024b", "Pé")
    for path in (
        "/var/lib/mysql/caf@0p@002d@0pv@0pnements/a@00400024b#P#P@0p.ibd",
        "/var/lib/mysql/caf@0p@002d@0pv@0pnements/a@00400024b#p#p@0p.ibd",  # MySQL 8
        "C:\\data\\caf@0p@002d@0pv@0pnements\\a@00400024b#P#P@0p.IBD",
    ):
        assert file_path_key(path) == path_key(name.key)


def test_a_file_path_key_keeps_tables_whose_names_hold_the_separator_apart():
    """Table `a#p#b` partition `c` and table `a` partition `b#p#c`."""
    one = file_path_key("/d/s/a@0023p@0023b#P#c.ibd")
    other = file_path_key("/d/s/a#P#b@0023p@0023c.ibd")
    assert one and other and one != other


@pytest.mark.parametrize("path", ["/d/s/t.ibd", "/d/s/t#P#p0.frm", "t#P#p0.ibd", "/d/s/t.par"])
def test_files_that_are_not_partitions_have_no_key(path):
    assert file_path_key(path) is None


# -- statistics names: decoded, `#` and all ------------------------------------------------


def test_a_statistics_name_is_split_at_its_separators():
    assert split_partition("s", "orders#P#p3") == PartitionName("s", "orders", "p3")
    assert split_partition("s", "orders#p#p3#sp#s0") == PartitionName("s", "orders", "p3", "s0")
    assert split_partition("s", "orders") is None
    assert split_partition("s", "orders#P#p3#TMP#") is None
    assert split_partition("s", "#P#p3") is None


def test_a_table_name_holding_the_separator_is_read_whole():
    """Without other knowledge the longest table name wins: people name tables, partitions
    are mostly p0, p1..."""
    assert split_partition("s", "x#p#y#P#p0") == PartitionName("s", "x#p#y", "p0")
    assert split_partition("s", "a#P#b#P#p0#SP#s0") == PartitionName("s", "a#P#b", "p0", "s0")


def test_the_partitions_the_tablespaces_named_settle_an_ambiguous_statistics_name():
    known = {PartitionKey("s", "a", "b#p#c")}
    assert split_partition("s", "a#P#b#P#c", known) == PartitionName("s", "a", "b#P#c")
    assert split_partition("s", "a#P#b#P#c") == PartitionName("s", "a#P#b", "c")


# -- matching -------------------------------------------------------------------------------


def test_partition_names_match_without_regard_to_case_as_on_the_server():
    assert PartitionName("s", "t", "P0").key == PartitionName("s", "t", "p0").key
    assert PartitionName("s", "t", "PÉ").key == PartitionName("s", "t", "pé").key
    # The server refuses partitions ΟΔΟΣ and οδοσ in one table: one name. str.lower()
    # would spell the first with a final sigma.
    assert fold("ΟΔΟΣ") == "οδοσ" == fold("οδοσ")
    # ... but takes pß and pss as two.
    assert fold("pß") != fold("pss")
    assert fold("İ") == "i"


def test_table_names_match_exactly_so_tables_differing_in_case_stay_apart():
    """With lower_case_table_names=0 (Linux) `É` and `é`, `T` and `t` are two tables."""
    assert PartitionName("s", "É", "p0").key != PartitionName("s", "é", "p0").key
    assert PartitionName("s", "T", "p0").key != PartitionName("s", "t", "p0").key
    assert PartitionName("S", "t", "p0").key != PartitionName("s", "t", "p0").key


def test_a_tablespace_list_holds_what_its_rows_repeat_once():
    """Parsed, the rows' repeated sizes and row formats are one object each (PyMySQL
    reads every value as its own), and each row keeps its values."""
    from partdash.mysql.sources.tablespaces import parse

    # Built at run time, as PyMySQL builds them: equal values, distinct objects.
    rows = [
        (f"s/t#P#p{n}", 10 + n, int("98304"), int("98304"), int("16384"), 0, "".join("Dynamic"))
        for n in range(3)
    ]
    assert rows[0][2] is not rows[1][2] and rows[0][6] is not rows[1][6]
    files = parse(rows)
    assert [(f.name.partition, f.space_id, f.file_bytes, f.page_size) for f in files] == [
        ("p0", 10, 98304, 16384),
        ("p1", 11, 98304, 16384),
        ("p2", 12, 98304, 16384),
    ]
    for field in ("file_bytes", "allocated_bytes", "page_size", "row_format"):
        assert len({id(getattr(f, field)) for f in files}) == 1, field
