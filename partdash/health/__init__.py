"""Pure partition-health analytics: plain values in, plain values out, no database."""
