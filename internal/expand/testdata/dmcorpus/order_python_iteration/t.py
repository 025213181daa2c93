def GenerateConfig(context):
  names = [k for k in context.properties['ports']]
  nums = [v for k, v in context.properties['ports'].items()]
  return {'resources': [{'name': 't', 'type': 'v1/Service', 'properties': {'order': names, 'nums': nums}}]}
