"""What a GPU hour costs: price books from catalog rows and SkyPilot catalogs, rental and
ownership (TCO) cost of a plan."""
