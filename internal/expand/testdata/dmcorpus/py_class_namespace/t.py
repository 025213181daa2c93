class Naming(object):
  def __init__(self, prefix):
    self.prefix = prefix

  def name(self, s):
    return self.prefix + '-' + s

def GenerateConfig(context):
  n = Naming(context.env['deployment'])
  return {'resources': [{'name': n.name('a'), 'type': 'v1/ConfigMap'}]}
