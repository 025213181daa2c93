from helpers import naming
def GenerateConfig(context):
  names = [naming.name(context.properties['prefix'], s) for s in ['a', 'b']]
  return {'resources': [{'name': n, 'type': 'pubsub.v1.topic', 'properties': {'topic': n}} for n in names]}
