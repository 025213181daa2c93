def GenerateConfig(c):
  return {'resources': [{'name': 'r', 'type': 'T', 'properties': {'a': -3.0 // 0.3, 'b': 7.0 // 2, 'c': -7 // 2.0, 'd': 5.5 // -2, 'e': 7 // 2, 'f': -7 // 2, 'g': True // 1}}]}
