import yaml
def GenerateConfig(context):
  d = yaml.load('x: on\ny: [n, 1]\n')
  return {'resources': [{'name': 't', 'type': 'v1/ConfigMap', 'properties': d}]}
