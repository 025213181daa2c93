def make(i):
  return {'name': 'vm-%d' % i, 'type': 'compute.v1.instance', 'properties': {'index': i, 'tags': {'items': ['t%d' % j for j in range(i + 1)]}}}

def GenerateConfig(context):
  return {'resources': [make(i) for i in range(context.properties['size'])]}
