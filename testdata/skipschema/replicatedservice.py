def GenerateConfig(context):
    p = context.properties
    return {'resources': [{'name': context.env['name'], 'type': 'v1/ConfigMap',
        'properties': {'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': context.env['name']},
                       'data': {'port': str(p['port'])}}}]}
