import common
def GenerateConfig(context):
  return {'resources': [{'name': 'disk', 'type': 'compute.v1.disk',
                         'properties': {'sizeGb': context.properties['size'], 'zone': common.ZONE, 'kind': context.properties['kind']}}]}
