def GenerateConfig(context):
  return {'resources': [{'name': 'leaf', 'type': 'v1/ConfigMap', 'properties': {'keys': list(context.properties['d'].keys())}}]}
