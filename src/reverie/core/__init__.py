"""Pure rules: no I/O, no clock, no globals. Everything here is deterministic and unit-tested."""
