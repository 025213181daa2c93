import yaml

class Foo(Base):
    pass

def GenerateConfig(context):
    return ""
