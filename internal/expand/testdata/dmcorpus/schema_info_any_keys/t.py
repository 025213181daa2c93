def GenerateConfig(context):
  return {'resources': [{'name': 'x', 'type': 'v1/ConfigMap', 'properties': {'data': context.properties}}]}
