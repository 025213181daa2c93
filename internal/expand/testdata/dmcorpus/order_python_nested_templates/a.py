def GenerateConfig(context):
  d = {}
  d['z'] = 1
  d['b'] = 2
  d['m'] = 3
  return {'resources': [{'name': 'b', 'type': 'b.py', 'properties': {'d': d}}]}
