// Cloud Code loaded by parsetest.Start when Options.CloudCode is empty
// (parsetest.DefaultCloudCode). Each hook exists so a test can observe that a
// write really went through Parse Server.

// beforeSave changes a field: trims the title and stamps checkedBy.
// A title of only spaces, or priority outside 1..5, is a validation error.
Parse.Cloud.beforeSave('Note', request => {
  const note = request.object;
  const title = note.get('title');
  if (typeof title === 'string') {
    if (title.trim() === '') {
      throw new Parse.Error(Parse.Error.VALIDATION_ERROR, 'Note title must not be empty');
    }
    note.set('title', title.trim());
  }
  const priority = note.get('priority');
  if (priority !== undefined && (typeof priority !== 'number' || priority < 1 || priority > 5)) {
    throw new Parse.Error(Parse.Error.VALIDATION_ERROR, 'Note priority must be a number from 1 to 5');
  }
  note.set('checkedBy', 'beforeSave');
});

// afterSave writes an audit row (class NoteAudit) for every saved Note.
Parse.Cloud.afterSave('Note', async request => {
  const row = new Parse.Object('NoteAudit');
  row.set('noteId', request.object.id);
  row.set('action', request.original ? 'update' : 'create');
  row.set('user', request.user ? request.user.id : (request.master ? 'master' : null));
  await row.save(null, { useMasterKey: true });
});

// afterDelete records deletions the same way.
Parse.Cloud.afterDelete('Note', async request => {
  const row = new Parse.Object('NoteAudit');
  row.set('noteId', request.object.id);
  row.set('action', 'delete');
  await row.save(null, { useMasterKey: true });
});

// greet returns a greeting built from its params and who called it.
Parse.Cloud.define('greet', request => {
  const name = request.params.name;
  if (typeof name !== 'string' || name === '') {
    throw new Parse.Error(Parse.Error.VALIDATION_ERROR, 'greet needs a name');
  }
  return {
    greeting: `Hello, ${name}!`,
    times: request.params.times || 1,
    user: request.user ? request.user.get('username') : null,
    master: !!request.master,
  };
});

// countNotes counts the Notes the caller can see (Parse applies ACL/CLP).
Parse.Cloud.define('countNotes', async request => {
  const q = new Parse.Query('Note');
  return q.count({ sessionToken: request.user ? request.user.getSessionToken() : undefined, useMasterKey: !!request.master });
});

// addNote creates a Note as the caller (ACL/CLP and the Note triggers
// apply); with dryRun: true it changes nothing and says what it would create.
Parse.Cloud.define('addNote', async request => {
  const title = request.params.title;
  if (request.params.dryRun) {
    return { dryRun: true, wouldCreate: { className: 'Note', title } };
  }
  const note = new Parse.Object('Note');
  note.set('title', title);
  await note.save(null, request.master ? { useMasterKey: true } : { sessionToken: request.user.getSessionToken() });
  return { objectId: note.id };
});
