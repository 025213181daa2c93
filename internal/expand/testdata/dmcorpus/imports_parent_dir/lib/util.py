def GenerateConfig(context):
  return {'resources': [{'name': 'util', 'type': 'runtimeconfig.v1beta1.config', 'properties': {'config': context.env['name']}}]}
