def GenerateConfig(context):
  i = context.properties['index']
  return {'resources': [{'name': context.env['name'] + '-disk', 'type': 'compute.v1.disk',
                         'properties': {'sizeGb': 10 * (i + 1), 'parent': context.env['type']}}]}
