def GenerateConfig(context):
  return {'resources': [{'name': 'meta', 'type': 'compute.v1.instance',
                         'properties': {'metadata': {'items': [{'key': 'startup-script', 'value': context.imports['startup.sh']}]}}}]}
