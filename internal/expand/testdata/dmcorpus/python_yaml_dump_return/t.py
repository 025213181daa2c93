import yaml
def GenerateConfig(context):
  res = [{'name': 'a', 'type': 'v1/ConfigMap', 'properties': {'data': {'k': 'yes', 'n': 'n', 'v': '1.0'}}}]
  return yaml.dump({'resources': res}, default_flow_style=False)
