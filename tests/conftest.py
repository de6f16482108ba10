import matplotlib
from hypothesis import settings

matplotlib.use("Agg")

# At least 200 examples per property, everywhere (CI included), with no deadline: torch's first call is slow.
settings.register_profile("project", max_examples=200, deadline=None, derandomize=True)
settings.load_profile("project")
