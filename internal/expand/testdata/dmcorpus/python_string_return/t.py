def GenerateConfig(context):
  p = context.properties
  return '''resources:
- name: {name}
  type: v1/Service
  properties:
    port: {port}
    enabled: on
'''.format(name=p['name'], port=p['port'])
