def GenerateConfig(context):
  f = context.properties['f']
  return {'resources': [{'name': 't', 'type': 'v1/ConfigMap', 'properties': {'a': '%05.1f' % f, 'b': '%-6s|' % 'ab', 'c': '%3d' % 7}}]}
