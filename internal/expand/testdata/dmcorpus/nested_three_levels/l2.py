def GenerateConfig(context):
  return {'resources': [{'name': context.env['name'] + '-leaf', 'type': 'l3.jinja', 'properties': {'i': context.properties['i'], 'from': context.env['name']}}]}
