def GenerateConfig(context):
  return {'resources': [{'name': 'i', 'type': 'inner.jinja', 'properties': {'cfg': context.properties['config'], 'extra': 'x'}}]}
