"""A web server VM that points at a backend address."""


def GenerateConfig(context):
    props = context.properties
    name = context.env['name'] + '-vm'
    zone = props['zone']
    return {
        'resources': [{
            'name': name,
            'type': 'compute.v1.instance',
            'properties': {
                'zone': zone,
                'machineType': 'zones/%s/machineTypes/%s' % (zone, props['machineType']),
                'tags': {'items': ['http']},
                'disks': [{
                    'deviceName': 'boot',
                    'boot': True,
                    'autoDelete': True,
                    'initializeParams': {'sourceImage': props['image']},
                }],
                'networkInterfaces': [{
                    'network': props['network'],
                    'subnetwork': props['subnetwork'],
                    'accessConfigs': [{'name': 'External NAT', 'type': 'ONE_TO_ONE_NAT'}],
                }],
                'metadata': {'items': [{
                    'key': 'startup-script',
                    'value': 'echo backend=http://%s:8080 > /etc/web.env' % props['backend'],
                }]},
            },
        }],
        'outputs': [{
            'name': 'internalIP',
            'value': '$(ref.%s.networkInterfaces[0].networkIP)' % name,
        }],
    }
