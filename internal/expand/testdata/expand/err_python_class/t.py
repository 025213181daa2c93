import yaml

class Foo(Exception):
    pass

def GenerateConfig(context):
    return ""
