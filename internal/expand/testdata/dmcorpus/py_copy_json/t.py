import copy
import json
def GenerateConfig(context):
  b = copy.deepcopy(context.properties['base'])
  b['a'] = 2
  return {'resources': [{'name': 't', 'type': 'v1/ConfigMap', 'properties': {
      'copy': b, 'orig': context.properties['base'],
      'json': json.dumps({'b': 1, 'a': [1, 2]}, sort_keys=True), 'indented': json.dumps({'a': 1}, indent=2)}}]}
