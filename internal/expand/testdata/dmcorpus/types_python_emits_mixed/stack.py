def GenerateConfig(context):
  resources = []
  for b in context.properties['buckets']:
    resources.append({
        'name': context.env['deployment'] + '-' + b,
        'type': 'storage.v1.bucket',
        'properties': {'location': 'EU', 'storageClass': 'STANDARD'},
    })
  resources.append({'name': 'sa', 'type': 'iam.v1.serviceAccount',
                    'properties': {'accountId': 'sa-' + context.env['deployment']}})
  resources.append({'name': 'cm', 'type': 'v1/ConfigMap',
                    'properties': {'data': {'n': str(len(resources))}}})
  return {'resources': resources}
