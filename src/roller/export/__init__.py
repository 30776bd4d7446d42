"""roller.export"""
