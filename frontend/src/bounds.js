// RANGE partition bounds as dates, to place them on a time axis. The API's analytics
// (partdash.health.bounds) decide runway; this only reads the common spellings back for
// drawing: TO_DAYS, TO_SECONDS, UNIX_TIMESTAMP, YEAR of a column, and date literals.

const DAY_MS = 86400000;
const TO_DAYS_EPOCH = 719528; // TO_DAYS('1970-01-01')
const TO_SECONDS_EPOCH = 62167219200; // TO_SECONDS('1970-01-01 00:00:00')
const FROM_NUMBER = {
  to_days: (n) => (n - TO_DAYS_EPOCH) * DAY_MS,
  to_seconds: (n) => (n - TO_SECONDS_EPOCH) * 1000,
  unix_timestamp: (n) => n * 1000,
  year: (n) => Date.UTC(n, 0, 1),
};

export function isCatchall(description) {
  return /^\(?\s*MAXVALUE/i.test(description ?? "");
}

function firstValue(description) {
  const text = description.trim().replace(/^\((.*)\)$/s, "$1");
  const match = text.match(/^\s*('(?:[^'\\]|\\.|'')*'|[^,]+)/);
  return match ? match[1].trim() : null;
}

// The exclusive upper bound of a partition as a Date, or null (MAXVALUE, id ranges, unknown).
export function boundDate(expression, description) {
  if (description == null || isCatchall(description)) return null;
  const value = firstValue(description);
  const literal = value?.match(/^(?:_\w+)?'(\d{4}-\d\d-\d\d(?:[ T][\d:.]+)?)'$/);
  if (literal) return new Date(`${literal[1].replace(" ", "T")}${literal[1].length > 10 ? "" : "T00:00:00"}Z`);
  const fn = (expression ?? "").replaceAll("`", "").toLowerCase().match(/^\(?\s*([a-z_]+)\s*\(/)?.[1];
  const number = Number(value);
  if (!FROM_NUMBER[fn] || !Number.isFinite(number)) return null;
  return new Date(FROM_NUMBER[fn](number));
}

export function addDays(date, days) {
  return new Date(date.getTime() + days * DAY_MS);
}
