def GenerateConfig(context):
  return {'resources': [{'name': 'leaf', 'type': 'v1/ConfigMap', 'properties': {'data': {
      'name': context.env['name'], 'type': context.env['type'], 'parent': context.properties['parentType'],
      'deployment': context.env['deployment']}}}]}
