import sys
import startup


def GenerateConfig(context):
  context.port = context.properties['port']
  context.shared_label = context.env['deployment'] + '-' + context.env['name']
  metadata = {
      'enable-oslogin': 'FALSE',
      'startup-script': startup.script(context),
      'enable-oslogin': 'TRUE',
  }
  big = sys.maxsize > 2**32
  return {'resources': [{
      'name': context.env['name'],
      'type': 'compute.v1.instance',
      'properties': {
          'zone': context.properties['zone'],
          'metadata': {'items': [{'key': k, 'value': v} for k, v in sorted(metadata.items())]},
          'labels': {'python': str(sys.version_info[0] >= 3).lower(), 'bits64': str(big).lower()},
      },
  }]}
