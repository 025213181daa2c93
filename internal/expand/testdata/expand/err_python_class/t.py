import yaml

class Foo(object):
    pass

def GenerateConfig(context):
    return ""
