import yaml
def GenerateConfig(context):
  data = yaml.safe_load('a: yes\nb: n\nc: 017\nd: 12:30:00\ne: 1e3\n')
  return yaml.dump({'resources': [{'name': 't', 'type': 'v1/ConfigMap', 'properties': data}]})
