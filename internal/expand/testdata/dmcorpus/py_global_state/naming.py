"""Unique names across one template's resources."""

_issued = {}
_total = 0


def unique(base):
  global _total
  _total += 1
  n = _issued.get(base, 0)
  _issued[base] = n + 1
  return base if n == 0 else '%s-%d' % (base, n)


def total():
  return _total
