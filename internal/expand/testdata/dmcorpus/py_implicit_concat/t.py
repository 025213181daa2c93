def GenerateConfig(context):
  url = ('https://www.googleapis.com/compute/v1/'
         'projects/' + context.env['project'])
  return {'resources': [{'name': 't', 'type': 'v1/ConfigMap', 'properties': {'url': url, 'x': 'a' 'b'}}]}
