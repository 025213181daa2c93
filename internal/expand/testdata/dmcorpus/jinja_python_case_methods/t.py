def GenerateConfig(c):
  return {'resources': [{'name': 'p', 'type': 'T', 'properties': {'j': '-'.join('abc'), 'k': ''.join(['x', 'y']), 't': "they're".title()}}]}
