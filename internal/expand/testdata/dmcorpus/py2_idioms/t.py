def GenerateConfig(context):
  out = []
  for k, v in context.properties['labels'].iteritems():
    out.append(k + '=' + v)
  idx = [i for i in xrange(3)]
  return {'resources': [{'name': 't', 'type': 'v1/ConfigMap', 'properties': {'pairs': out, 'idx': idx, 'u': unicode('u')}}]}
