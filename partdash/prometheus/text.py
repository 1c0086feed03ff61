"""Prometheus's text format 0.0.4, written here rather than by prometheus_client.

prometheus_client's `generate_latest` validates and escapes every label of every sample
again; at 1,000 servers (72,000 samples, most of them the alerts' zeros) that took 3.1 s
of a 3.2 s scrape. Here each sample becomes its line as it is added, a label's text
escaped once per distinct value and a number formatted once per distinct value; a line
is a string, which the garbage collector does not track, where a sample held as lists
and tuples made 72,000 tracked objects and the collections they set off took more than
the writing (bench/fleet_pages_bench.py has the figures). The output is what
`generate_latest` writes: HELP and TYPE per family, label names sorted, numbers as Go
writes them (`floatToGoString`).
"""

from collections.abc import Iterable

from prometheus_client.utils import floatToGoString


def _escaped(value: str) -> str:
    if "\\" in value or '"' in value or "\n" in value:
        return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")
    return value


def label_text(names: list[str], values: list[str]) -> str:
    """The labels' text as a family with these label names writes it (sorted by name),
    for `Family.add_labelled`: a table's 17 families share one."""
    pairs = sorted(zip(names, values, strict=True))
    return ",".join(f'{name}="{_escaped(value)}"' for name, value in pairs)


class Family:
    """One gauge family: its name, help text and label names, and a line per sample
    (label values in the order of `labels`)."""

    __slots__ = ("name", "documentation", "labels", "lines", "_order", "_pairs", "_numbers")

    def __init__(self, name: str, documentation: str, labels: list[str]) -> None:
        self.name = name
        self.documentation = documentation
        self.labels = labels
        self.lines: list[str] = []
        order = sorted(range(len(labels)), key=labels.__getitem__)
        self._order = [(index, labels[index]) for index in order]
        # Per label (in sorted order): its `name="value"` text by value.
        self._pairs: list[dict[str, str]] = [{} for _ in order]
        self._numbers: dict[float, str] = {}

    def _pair(self, position: int, value: str) -> str:
        name = self._order[position][1]
        text = self._pairs[position][value] = f'{name}="{_escaped(value)}"'
        return text

    def _number(self, value: float) -> str:
        text = self._numbers[value] = floatToGoString(value)
        return text

    def add_metric(self, values: list[str], value: float) -> None:
        if not self._order:
            number = self._numbers.get(value) or self._number(value)
            self.lines.append(f"{self.name} {number}\n")
            return
        pairs = self._pairs
        labels = ",".join(
            [
                pairs[position].get(values[index]) or self._pair(position, values[index])
                for position, (index, _) in enumerate(self._order)
            ]
        )
        self.add_labelled(labels, value)

    def add_labelled(self, labels: str, value: float) -> None:
        """A sample whose labels' text is written already (`label_text` of this family's
        label names)."""
        number = self._numbers.get(value) or self._number(value)
        self.lines.append(f"{self.name}{{{labels}}} {number}\n")

    def add_metrics(self, values: list[str], label: str, samples: list[tuple[str, float]]) -> None:
        """Samples that differ in `label` alone: one per (its value, number) of `samples`,
        the other labels as in `values` (its entry for `label` unused). The label text
        around the one that differs is written once (64,000 alert samples at 1,000
        servers: 10 ms rather than 49)."""
        position = [name for _, name in self._order].index(label)
        index = self._order[position][0]
        parts = [
            self._pairs[at].get(values[i]) or self._pair(at, values[i])
            for at, (i, _) in enumerate(self._order)
            if i != index
        ]
        before = ",".join(parts[:position]) + ("," if position else "") + f'{label}="'
        after = '"' + "".join(f",{part}" for part in parts[position:])
        head = f"{self.name}{{{before}"
        for value, number in samples:
            text = self._numbers.get(number) or self._number(number)
            self.lines.append(f"{head}{_escaped(value)}{after}}} {text}\n")

    def header(self) -> str:
        documentation = self.documentation.replace("\\", r"\\").replace("\n", r"\n")
        return f"# HELP {self.name} {documentation}\n# TYPE {self.name} gauge\n"


def render(families: Iterable[Family]) -> bytes:
    """The families in text format 0.0.4, in the order given."""
    return "".join(
        [text for family in families for text in (family.header(), *family.lines)]
    ).encode()
