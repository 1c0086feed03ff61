"""Names as a search compares them: without accents, whatever the case."""

import unicodedata


def folded(text: str) -> str:
    """`text` without its accents and case: "Commandes_Été" gives "commandes_ete".
    Compatibility forms are spelt out too ("ﬁ" gives "fi", "ß" gives "ss"), so what a
    reader types on an ordinary keyboard finds the name."""
    spelt_out = unicodedata.normalize("NFKD", text)
    return "".join(c for c in spelt_out if not unicodedata.combining(c)).casefold()
