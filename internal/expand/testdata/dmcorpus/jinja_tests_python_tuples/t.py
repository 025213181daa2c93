def GenerateConfig(c):
  t = (1, 2, 2, 'x')
  return {'resources': [{'name': 'p', 'type': 'T', 'properties': {'c': t.count(2), 'i': t.index('x'), 'l': [3, 1].index(1)}}]}
