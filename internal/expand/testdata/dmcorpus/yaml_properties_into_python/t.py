def GenerateConfig(context):
  p = context.properties
  return {'resources': [{'name': 't', 'type': 'v1/ConfigMap', 'properties': {
      'count': p['n'] * 2, 'flags': [str(f) for f in p['flags']], 'mode': p['mode'] + '!'}}]}
