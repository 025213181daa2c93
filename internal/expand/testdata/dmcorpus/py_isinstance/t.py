def kind(v):
  if isinstance(v, list):
    return 'list'
  if isinstance(v, dict):
    return 'dict'
  if isinstance(v, basestring):
    return 'str'
  return 'other'

def GenerateConfig(context):
  p = context.properties
  return {'resources': [{'name': 't', 'type': 'v1/ConfigMap', 'properties': {k: kind(p[k]) for k in p}}]}
