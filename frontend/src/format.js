// Human units for figures and the browser's own locale and time zone for dates.

const counts = new Intl.NumberFormat();
const decimals = new Intl.NumberFormat(undefined, { maximumFractionDigits: 2 });
const dates = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });
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
  const steps = [[60, "second"], [60, "minute"], [24, "hour"], [365, "day"]];
  let value = seconds;
  for (const [size, unit] of steps) {
    if (Math.abs(value) < size) return relative.format(Math.round(value), unit);
    value /= size;
  }
  return relative.format(Math.round(value), "year");
}
