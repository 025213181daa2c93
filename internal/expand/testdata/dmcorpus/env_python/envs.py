def GenerateConfig(context):
  e = context.env
  sa = e['project_number'] + '-compute@developer.gserviceaccount.com'
  keys = ['deployment', 'name', 'type', 'project', 'current_time', 'username']
  return {'resources': [{'name': 'vm-' + e['deployment'], 'type': 'compute.v1.instance',
                         'properties': {'serviceAccounts': [{'email': sa}], 'env': {k: e[k] for k in keys}}}]}
