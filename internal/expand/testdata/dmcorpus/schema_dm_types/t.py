def GenerateConfig(context):
  p = context.properties
  return {'resources': [{'name': 'x', 'type': 'v1/ConfigMap', 'properties': {'n': p['n'], 'f': p['f'], 'b': p['b'], 's': p['s']}}]}
