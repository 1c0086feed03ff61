// Human units for figures and the browser's own locale and time zone for dates.

const counts = new Intl.NumberFormat();
const decimals = new Intl.NumberFormat(undefined, { maximumFractionDigits: 2 });
// dateStyle cannot be combined with timeZoneName: the same fields spelled out, with the
// zone ("Nov 22, 2026, 7:36 PM CET"), since the admin shows UTC and the pages local time.
const DATE_FIELDS = {
  year: "numeric",
  month: "short",
  day: "numeric",
  hour: "numeric",
  minute: "2-digit",
};
const dates = new Intl.DateTimeFormat(undefined, { ...DATE_FIELDS, timeZoneName: "short" });
const zoneless = new Intl.DateTimeFormat(undefined, DATE_FIELDS);
const polls = new Intl.DateTimeFormat(undefined, { dateStyle: "short", timeStyle: "medium" });
const days = new Intl.DateTimeFormat(undefined, { dateStyle: "medium" });
const utcDays = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeZone: "UTC" });
const relative = new Intl.RelativeTimeFormat(undefined, { numeric: "auto" });
const BYTE_UNITS = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
const DASH = "—";

export function count(value) {
  return value == null ? DASH : counts.format(value);
}

export function number(value) {
  return value == null ? DASH : decimals.format(value);
}

// "1 day", "2 days", "2.2 days", "485.8 days": as partdash.health.findings.day_count.
const tenths = new Intl.NumberFormat(undefined, { maximumFractionDigits: 1 });
export function dayCount(value) {
  if (value == null) return DASH;
  const rounded = Math.round(value * 10) / 10;
  return `${tenths.format(rounded)} ${rounded === 1 ? "day" : "days"}`;
}

export function bytes(value) {
  if (value == null) return DASH;
  let scaled = value;
  let unit = 0;
  while (Math.abs(scaled) >= 1024 && unit < BYTE_UNITS.length - 1) {
    scaled /= 1024;
    unit += 1;
  }
  const digits = unit === 0 || scaled >= 100 ? 0 : 1;
  return `${scaled.toFixed(digits)} ${BYTE_UNITS[unit]}`;
}

export function rate(value) {
  return value == null ? DASH : `${bytes(value)}/s`;
}

export function percent(ratio) {
  return ratio == null ? DASH : `${decimals.format(ratio * 100)} %`;
}

export function localTime(iso) {
  return iso ? dates.format(new Date(iso)) : "never";
}

// Without the zone, for many times side by side (a chart's axis) whose caption names it.
export function localTimeNoZone(iso) {
  return iso ? zoneless.format(new Date(iso)) : "never";
}

// The browser's zone as the times show it ("CET"), for captions.
export function zoneName(date = new Date()) {
  return dates.formatToParts(date).find((part) => part.type === "timeZoneName")?.value ?? "";
}

// To the second: polls a few seconds apart stay distinct on an axis.
export function pollTime(iso) {
  return polls.format(new Date(iso));
}

export function localDay(date) {
  return date ? days.format(date) : DASH;
}

// A RANGE bound is a calendar day (midnight UTC here): show that day wherever the reader is.
export function boundDay(date) {
  return date ? utcDays.format(date) : DASH;
}

// "5 minutes ago" for an ISO time; used in titles next to absolute times.
export function age(iso, now = Date.now()) {
  if (!iso) return "never";
  const seconds = (new Date(iso).getTime() - now) / 1000;
  const steps = [
    [60, "second"],
    [60, "minute"],
    [24, "hour"],
    [365, "day"],
  ];
  let value = seconds;
  for (const [size, unit] of steps) {
    if (Math.abs(value) < size) return relative.format(Math.round(value), unit);
    value /= size;
  }
  return relative.format(Math.round(value), "year");
}

// "not polled for 7 min" (a server whose polls stopped: its `not_polled_seconds`).
export function notPolledFor(seconds) {
  const minutes = Math.floor(seconds / 60);
  return minutes < 120
    ? `not polled for ${minutes} min`
    : `not polled for ${Math.floor(minutes / 60)} h`;
}

// What a reader calls a subpartition ("p2024 / p2024sp0"), as the history API labels it.
export function partitionLabel(partition) {
  const name = shown(partition.name);
  return partition.subpartition ? `${name} / ${shown(partition.subpartition)}` : name;
}

// Names come from the monitored server and may hold anything: a right-to-left override
// (U+202E) would show "orders\u202etxt.exe" as "ordersexe.txt", a zero-width space would
// hide itself. Control, formatting and separator characters are shown escaped, in the
// notation partdash.lib.shown uses in emails ("\u202e"); `keepNewlines` for multi-line
// text (a fix's SQL in a <pre>).
const HIDDEN = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu;
const NAMED = { "\t": "\\t", "\n": "\\n", "\r": "\\r" };

function escaped(character) {
  if (NAMED[character]) return NAMED[character];
  const code = character.codePointAt(0);
  const hex = code.toString(16);
  if (code < 0x100) return `\\x${hex.padStart(2, "0")}`;
  if (code < 0x10000) return `\\u${hex.padStart(4, "0")}`;
  return `\\U${hex.padStart(8, "0")}`;
}

export function shown(text, { keepNewlines = false } = {}) {
  if (text == null) return text;
  return String(text).replace(HIDDEN, (character) =>
    keepNewlines && character === "\n" ? character : escaped(character),
  );
}

// Text as a search compares it: without accents, whatever the case ("Été" gives "ete"), as
// the server's search folds names (partdash/lib/folding.py).
export function folded(text) {
  return text.normalize("NFKD").replace(/\p{M}/gu, "").toLowerCase();
}
