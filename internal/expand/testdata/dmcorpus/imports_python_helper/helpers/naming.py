def name(prefix, suffix):
  return '%s-%s' % (prefix, suffix)
