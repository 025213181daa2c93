def GenerateConfig(context):
  return {'resources': [{'name': 'b-res', 'type': 'pubsub.v1.topic', 'properties': {'topic': 'b'}}]}
