def GenerateConfig(context):
  return {'resources': [{'name': 'the-vm', 'type': 'compute.v1.instance',
                         'properties': {'mtu': '$(ref.the-net.mtu)', 'desc': 'mtu $(ref.the-net.mtu)'}}]}
