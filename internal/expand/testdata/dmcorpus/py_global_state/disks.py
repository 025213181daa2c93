import naming

RESOURCES = []
SIZE = None


def add_disk(context):
  global SIZE
  if SIZE is None:
    SIZE = context.properties['sizeGb']
  else:
    SIZE = SIZE * 2
  RESOURCES.append({
      'name': naming.unique(context.env['name'] + '-disk'),
      'type': 'compute.v1.disk',
      'properties': {'sizeGb': SIZE, 'zone': 'us-central1-a'},
  })


def GenerateConfig(context):
  for _ in range(context.properties['count']):
    add_disk(context)
  RESOURCES.append({
      'name': context.env['name'] + '-summary',
      'type': 'ConfigMap',
      'properties': {'data': {'disks': str(naming.total())}},
  })
  return {'resources': RESOURCES}
